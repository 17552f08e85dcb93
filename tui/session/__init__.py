"""Service sessions: the one place where babysit watches a service and acts on it.

:class:`~tui.session.sessions.Sessions` holds, for one babysit process, the
connections, one :class:`~tui.session.watch.HostWatch` per host (its probe loop,
one round trip for the services someone watches) and one
:class:`~tui.session.service.ServiceSession` per service (its facts, its latest
report, its actions). The host screen, the fleet view and every CLI verb are
views of sessions; none of them assembles a fact itself.
"""
