"""``babysit demo``: a small local fleet of simulated servers that shows every trap.

Eight ``babysit sim`` processes of four engines run on this machine, each with its log in a
temporary folder, described by a hosts.yaml there (one ``local: true`` host,
:data:`~tui.demo.fleet.HOST`):

``qwen-mtp``     healthy, with speculative decoding (LIVE)
``qwen-nomtp``   the same flags, but the engine silently dropped them (LIVE, slower)
``gpu2-dead``    served, then was killed; its log remains (DEAD)
``gpu3-stale``   its log was deleted and recreated while it writes the old inode (STALE)
``gpu4-oom``     ran out of memory while loading (DEAD); its ``launch:`` brings it up
``llama-gguf``   llama.cpp's llama-server, healthy (LIVE)
``hf-llama``     HF TGI, healthy (LIVE)
``gpu7-wedged``  serves, then hangs: ``/health`` answers, its requests never finish (WEDGED)

A load generator (:mod:`tui.demo.load`, its own process) keeps requests flowing
to the servers that serve. Every process the demo starts is written down with
its start time (:mod:`tui.demo.fleet`), and only those verified processes are
ever signalled when the fleet stops.
"""
