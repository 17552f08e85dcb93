"""The C library through ctypes, loaded on first use."""


def c_library(loaded={}):  # noqa: B006 - loaded once per agent
    """(ctypes, the C library), on first use: only following and killing need them.

    dlopen(NULL) finds libc's symbols through Python itself, without
    ctypes.util.find_library (which runs ldconfig and costs megabytes of imports).
    """
    if not loaded:
        import ctypes

        loaded["pair"] = (ctypes, ctypes.CDLL(None, use_errno=True))
    return loaded["pair"]
