"""Server flags as a real launcher would pass them, and what the simulator infers from them.

The simulator does not validate flags the way the engines' argparse does: it
keeps every flag it is given (so ``/proc/PID/cmdline`` and the printed args
agree), types values the way the engines would (ints, floats, JSON objects),
and reads the handful it acts on (model, tp, port, speculative decoding,
memory fraction, limits).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

FlagValue = object


def _is_value_token(token: str) -> bool:
    if not token.startswith("-"):
        return True
    try:
        float(token)
    except ValueError:
        return False
    return True


def coerce(text: str) -> FlagValue:
    """Type one flag value: int, float, JSON object/list, or the string itself."""
    if text.startswith(("{", "[")):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


@dataclass(frozen=True)
class ServerFlags:
    """Flags after ``--``, in the order given.

    ``items`` maps argparse destinations (``--mem-fraction-static`` →
    ``mem_fraction_static``, after aliases) to typed values: a flag without a
    value is ``True``, several values make a list. ``positional`` holds bare
    words before the first flag (vLLM's ``serve MODEL``). ``raw`` is untouched.
    """

    raw: tuple[str, ...]
    positional: tuple[str, ...]
    items: tuple[tuple[str, FlagValue], ...]

    def get(self, *names: str, default: FlagValue = None) -> FlagValue:
        for wanted in names:
            for name, value in reversed(self.items):
                if name == wanted:
                    return value
        return default

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.items)

    def as_dict(self) -> dict[str, FlagValue]:
        return dict(self.items)


def parse_flags(tokens: list[str] | tuple[str, ...], aliases: dict[str, str]) -> ServerFlags:
    """Split ``tokens`` into flags; ``aliases`` maps a flag spelling to its destination."""
    tokens = list(tokens)
    positional: list[str] = []
    items: list[tuple[str, FlagValue]] = []
    index = 0
    while index < len(tokens) and not tokens[index].startswith("-"):
        positional.append(tokens[index])
        index += 1
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if not token.startswith("-") or token in ("-", "--"):
            positional.append(token)
            continue
        name, eq, inline = token.partition("=")
        values: list[str] = []
        if eq:
            values.append(inline)
        else:
            while index < len(tokens) and _is_value_token(tokens[index]):
                values.append(tokens[index])
                index += 1
        dest = aliases.get(name, name.lstrip("-").replace("-", "_"))
        value: FlagValue
        if not values:
            value = True
        elif len(values) == 1:
            value = coerce(values[0])
        else:
            value = [coerce(v) for v in values]
        items.append((dest, value))
    return ServerFlags(tuple(tokens), tuple(positional), tuple(items))


@dataclass(frozen=True)
class ModelInfo:
    """What the simulator pretends to know about a checkpoint, guessed from its name.

    Sizes are billions of parameters; ``kv_bytes_per_token`` is for the whole
    model (all layers, K and V) before tensor parallelism splits it.
    """

    name: str
    arch: str
    model_type: str
    params_b: float
    active_b: float
    layers: int
    kv_heads: int
    head_dim: int
    context_len: int
    mla: bool
    weight_bytes_per_param: float

    @property
    def kv_bytes_per_token(self) -> int:
        if self.mla:
            return self.layers * (512 + 64) * 2
        return 2 * self.layers * self.kv_heads * self.head_dim * 2

    @property
    def weights_gib(self) -> float:
        return self.params_b * 1e9 * self.weight_bytes_per_param / 2**30

    @property
    def shards(self) -> int:
        """Safetensors files: Hugging Face checkpoints split at about 5 GB."""
        return max(1, math.ceil(self.params_b * 1e9 * self.weight_bytes_per_param / 4.9e9))


#: (substring of the lower-cased name, arch, model_type, context length, MLA)
_FAMILIES: tuple[tuple[str, str, str, int, bool], ...] = (
    ("deepseek-v3", "DeepseekV3ForCausalLM", "deepseek_v3", 163840, True),
    ("deepseek-r1", "DeepseekV3ForCausalLM", "deepseek_v3", 163840, True),
    ("deepseek-v2", "DeepseekV2ForCausalLM", "deepseek_v2", 163840, True),
    ("kimi-k2", "DeepseekV3ForCausalLM", "kimi_k2", 131072, True),
    ("gpt-oss", "GptOssForCausalLM", "gpt_oss", 131072, False),
    ("glm-4.5", "Glm4MoeForCausalLM", "glm4_moe", 131072, False),
    ("qwen3-next", "Qwen3NextForCausalLM", "qwen3_next", 262144, False),
    ("qwen3", "Qwen3ForCausalLM", "qwen3", 40960, False),
    ("qwq", "Qwen2ForCausalLM", "qwen2", 40960, False),
    ("qwen2", "Qwen2ForCausalLM", "qwen2", 32768, False),
    ("mixtral", "MixtralForCausalLM", "mixtral", 32768, False),
    ("mistral", "MistralForCausalLM", "mistral", 32768, False),
    ("gemma", "Gemma3ForCausalLM", "gemma3", 131072, False),
    ("opt-", "OPTForCausalLM", "opt", 2048, False),
    ("llama", "LlamaForCausalLM", "llama", 131072, False),
)

_SIZE = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)([bm])(?![a-z])", re.IGNORECASE)
_ACTIVE = re.compile(r"-a(\d+(?:\.\d+)?)b", re.IGNORECASE)


def model_info(name: str) -> ModelInfo:
    """Guess architecture and size from a model path such as ``Qwen/Qwen3-30B-A3B``."""
    lower = name.lower()
    arch, model_type, context_len, mla = "LlamaForCausalLM", "llama", 131072, False
    for needle, f_arch, f_type, f_ctx, f_mla in _FAMILIES:
        if needle in lower:
            arch, model_type, context_len, mla = f_arch, f_type, f_ctx, f_mla
            break
    params = 8.0
    size = _SIZE.search(lower.rsplit("/", 1)[-1])
    if size is not None:
        params = float(size.group(1)) / (1000.0 if size.group(2).lower() == "m" else 1.0)
    elif mla:
        params = 671.0
    active = params
    moe = _ACTIVE.search(lower)
    if moe is not None:
        active = float(moe.group(1))
        arch = arch.replace("ForCausalLM", "MoeForCausalLM") if "Moe" not in arch else arch
    elif mla:
        active = 37.0
    elif model_type == "gpt_oss":
        active = 5.1 if params > 50 else 3.6
    layers = (
        24
        if params < 2
        else 36
        if params < 10
        else 40
        if params < 20
        else 64
        if params < 40
        else 80
    )
    if mla:
        layers = 61
    per_param = 1.0 if "fp8" in lower else 0.55 if ("awq" in lower or "gptq" in lower) else 2.0
    if model_type == "gpt_oss":
        per_param = 0.53
    return ModelInfo(
        name=name,
        arch=arch,
        model_type=model_type,
        params_b=params,
        active_b=max(active, 0.1),
        layers=layers,
        kv_heads=8,
        head_dim=128,
        context_len=context_len,
        mla=mla,
        weight_bytes_per_param=per_param,
    )
