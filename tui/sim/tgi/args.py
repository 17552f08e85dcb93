"""The launcher's ``Args`` struct (``launcher/src/main.rs``) as ``{:#?}`` prints it.

Fields in declaration order with their clap defaults; values come from the
server flags (``--num-shard 2`` → ``num_shard: Some(2)``). The field list is
the one of the launcher read for the reference; it is printed for every
simulated release.
"""

from __future__ import annotations

from tui.sim.flags import ServerFlags
from tui.sim.tgi.rust import Some, Variant, struct_debug

#: value enums: flag spelling -> Debug name
QUANTIZE = {
    "awq": "Awq",
    "eetq": "Eetq",
    "exl2": "Exl2",
    "gptq": "Gptq",
    "marlin": "Marlin",
    "bitsandbytes": "Bitsandbytes",
    "bitsandbytes-nf4": "BitsandbytesNf4",
    "bitsandbytes-fp4": "BitsandbytesFp4",
    "fp8": "Fp8",
}
DTYPE = {"float16": "Float16", "bfloat16": "BFloat16"}
KV_CACHE_DTYPE = {"fp8_e4m3fn": "Fp8e4m3fn", "fp8_e5m2": "Fp8e5m2"}
ROPE_SCALING = {"linear": "Linear", "dynamic": "Dynamic"}
USAGE_STATS = {"on": "On", "off": "Off", "no-stack": "NoStack"}

#: (field, kind, default): kind is how clap types it
# fmt: off
FIELDS: tuple[tuple[str, str, object], ...] = (
    ("model_id", "str", "bigscience/bloom-560m"),
    ("revision", "opt_str", None),
    ("validation_workers", "int", 2),
    ("sharded", "opt_bool", None),
    ("num_shard", "opt_int", None),
    ("quantize", "opt_quantize", None),
    ("speculate", "opt_int", None),
    ("dtype", "opt_dtype", None),
    ("kv_cache_dtype", "opt_kv_cache_dtype", None),
    ("trust_remote_code", "flag", False),
    ("max_concurrent_requests", "int", 128),
    ("max_best_of", "int", 2),
    ("max_stop_sequences", "int", 4),
    ("max_top_n_tokens", "int", 5),
    ("max_input_tokens", "opt_int", None),
    ("max_input_length", "opt_int", None),
    ("max_total_tokens", "opt_int", None),
    ("waiting_served_ratio", "float", 0.3),
    ("max_batch_prefill_tokens", "opt_int", None),
    ("max_batch_total_tokens", "opt_int", None),
    ("max_waiting_tokens", "int", 20),
    ("max_batch_size", "opt_int", None),
    ("cuda_graphs", "opt_int_list", None),
    ("hostname", "str", "0.0.0.0"),  # noqa: S104 - printed, not bound
    ("port", "int", 3000),
    ("shard_uds_path", "str", "/tmp/text-generation-server"),  # noqa: S108 - printed only
    ("master_addr", "str", "localhost"),
    ("master_port", "int", 29500),
    ("huggingface_hub_cache", "opt_str", None),
    ("weights_cache_override", "opt_str", None),
    ("disable_custom_kernels", "flag", False),
    ("cuda_memory_fraction", "float", 1.0),
    ("rope_scaling", "opt_rope_scaling", None),
    ("rope_factor", "opt_float", None),
    ("json_output", "flag", False),
    ("otlp_endpoint", "opt_str", None),
    ("otlp_service_name", "str", "text-generation-inference.router"),
    ("cors_allow_origin", "str_list", []),
    ("api_key", "opt_str", None),
    ("watermark_gamma", "opt_float", None),
    ("watermark_delta", "opt_float", None),
    ("ngrok", "flag", False),
    ("ngrok_authtoken", "opt_str", None),
    ("ngrok_edge", "opt_str", None),
    ("tokenizer_config_path", "opt_str", None),
    ("disable_grammar_support", "flag", False),
    ("env", "flag", False),
    ("max_client_batch_size", "int", 4),
    ("lora_adapters", "opt_str", None),
    ("usage_stats", "usage_stats", "on"),
)
# fmt: on
_ENUMS = {
    "opt_quantize": QUANTIZE,
    "opt_dtype": DTYPE,
    "opt_kv_cache_dtype": KV_CACHE_DTYPE,
    "opt_rope_scaling": ROPE_SCALING,
}
#: Args fields the simulator reads under another name (``--hostname`` is read as ``host``)
_FLAG_NAMES = {"hostname": "host"}


def _typed(kind: str, raw: object) -> object:  # noqa: PLR0911 - one return per clap type
    """One flag value as the struct holds it."""
    if kind == "flag":
        return raw is True or str(raw).lower() == "true"
    if kind == "opt_bool":
        return Some(str(raw).lower() == "true")
    if kind in ("int", "opt_int"):
        value: object = int(float(str(raw))) if _number(raw) else str(raw)
        return Some(value) if kind == "opt_int" else value
    if kind in ("float", "opt_float"):
        value = float(str(raw)) if _number(raw) else str(raw)
        return Some(value) if kind == "opt_float" else value
    if kind == "opt_int_list":
        items = raw if isinstance(raw, list) else str(raw).split(",")
        return Some([int(float(str(item))) for item in items if _number(item)])
    if kind == "str_list":
        return [str(item) for item in (raw if isinstance(raw, list) else [raw])]
    if kind == "usage_stats":
        return Variant(USAGE_STATS.get(str(raw), "On"))
    if kind in _ENUMS:
        name = _ENUMS[kind].get(str(raw).lower())
        return Some(Variant(name)) if name else Some(str(raw))
    value = str(raw)
    return Some(value) if kind == "opt_str" else value


def _number(raw: object) -> bool:
    try:
        float(str(raw))
    except ValueError:
        return False
    return True


def args_values(flags: ServerFlags, port: int) -> list[tuple[str, object]]:
    """The struct's fields after clap parsed ``flags`` (``port`` is the one bound)."""
    given = flags.as_dict()
    fields: list[tuple[str, object]] = []
    for name, kind, default in FIELDS:
        raw = given.get(_FLAG_NAMES.get(name, name))
        if name == "port":
            fields.append((name, port))
            continue
        if raw is None:
            if kind == "usage_stats":
                fields.append((name, Variant(USAGE_STATS[str(default)])))
            else:
                fields.append((name, default))
            continue
        fields.append((name, _typed(kind, raw)))
    return fields


def args_dump(flags: ServerFlags, port: int) -> str:
    """``format!("{:#?}", args)``: ``Args {`` then one line per field."""
    return struct_debug("Args", args_values(flags, port))
