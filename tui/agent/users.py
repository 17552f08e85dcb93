"""User names of uids, looked up once per agent."""


def user_name(uid, cache={}):  # noqa: B006 - a deliberate per-agent cache
    if uid is None:
        return None
    if uid not in cache:
        try:
            import pwd

            cache[uid] = pwd.getpwuid(uid).pw_name
        except (ImportError, KeyError):
            cache[uid] = str(uid)
    return cache[uid]
