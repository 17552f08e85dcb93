"""babysit's agent: the code that runs on a watched host, one module per thing.

It is never installed. For each request babysit bundles the modules its mode
needs, in dependency order, into one script (tui/remote/bundle.py), sends it
compressed on the channel's stdin and runs it with ``python3 -I -S``; it leaves
nothing behind and exits when its channel closes. So every module here runs on
any python3 >= 3.6 with the standard library alone, imports its siblings only as
``from .module import name`` (the bundle drops those lines: every top-level name
is unique across the package), and never imports this package's ``__init__``.

Whatever the mode, the agent's output begins with one mark line carrying the
request's nonce (main.say_started). The modes, frames and answers it speaks are
named in :mod:`tui.agent.protocol`.

Follow mode, output on stdout (after the mark): a stream of frames, one line of
JSON, then, when the JSON has ``"n"``, exactly that many raw bytes::

    opened    {path, dev, inode, size, mtime, start, read_back, head, anchor}
    data      {dev, inode, offset, size, n} + n bytes of the file at offset
    resume    {dev, inode, offset, held, checked, why}   the check of a cursor to resume at
    truncated {dev, inode, read, seen, old_size, new_size, regrown, away, reused,
               copy, copy_dev, copy_inode, unread}
    replaced  {old_dev, old_inode, new_dev, new_inode, old_state}
    deleted   {dev, inode}             the path is gone; the old file is still held
    missing   {path}                   the path does not exist (yet)
    appeared  {path}
    writer    {pid, fd, fd_path, deleted, matches_path}
    writer-gone {pid}
    lost      {dev, inode, offset}     the file to resume in is nowhere to be found
    eof       {dev, inode, offset}     (without --follow) everything was sent
    error     {message, path, file_type}   path and file_type when the path is not a
                                          regular file to read (see files.cannot_read)
    container {ref, runtime, found, problem, id, name, started_at, started_local,
               running, log_driver, log_path, readable, why}   (given a container instead
               of a path) where its log is; ``readable`` false: it cannot be followed as a
               file here, ``why`` says why, and the agent exits

Invariants: data frames of one file are contiguous (each starts where the last
ended) unless a ``truncated`` frame comes between; before switching to a new
file at the path, the old one is read to its end; the agent exits when its
stdin or stdout closes, so it dies with its channel, even while busy or blocked
(channel.watch_channel). Only a regular file is ever read (files.open_file).
Given a container, when its log's path names another file the agent reads every
file docker's rotation made since, oldest first, before the new log (rotated.py).

``head`` and ``anchor`` (hex) are a file's first bytes and the bytes just before
a position. A cursor to resume at carries them; the agent resumes there only if
the file still holds them (``resume`` says which), else it reads the file from
its start. When a file is cut, ``read`` is how much of its old content was
sent; a copy beside it (``log.1``, …) that holds the same bytes is read from
there to its end first (``copy``, ``unread``), so nothing written before the
cut is lost.

The probe mode prints one JSON answer to "which run is this?" for the services
asked about and exits. A service found by its processes (probe.process_entry) has
candidate runs: what runs its launch command or matches its ``match:``, listens
on its port or writes its log. A service in a container (its request names
``container: {name, runtime}``; containerprobe) is asked of the runtime's CLI
(container.container_facts): its one run is the container's processes while it
runs, its log its json-file (jsonlog: a run's records found by their ``time``,
read back from the end) or the service's own ``log:``. Serve-probes stays and
answers one such request per line of stdin, so a refresh every few seconds costs
no new python3 (nor, over SSH, a new session). The action modes (kill,
kill-record, alive, launch, preflight) answer in JSON lines.
"""
