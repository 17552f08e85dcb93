"""The agent dies with its channel: the end of its stdin ends it."""

import os


def watch_channel(fd):
    """End this process as soon as ``fd`` (our stdin, the channel babysit holds) reads
    EOF, whatever the main thread is doing: busy reading, blocked writing to a reader
    that stopped reading, or blocked in a call that does not return. Nothing more is
    sent on stdin while following, so EOF is the only thing read here."""
    import threading

    def watch():
        try:
            while os.read(fd, 4096):
                pass
        except OSError:
            pass
        os._exit(0)

    thread = threading.Thread(target=watch, name="channel")
    thread.daemon = True
    thread.start()
