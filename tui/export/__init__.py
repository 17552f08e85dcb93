"""``babysit export``: babysit's verdicts as Prometheus series.

:mod:`tui.export.series` says what is exported (fixed names, so dashboards and the
alert rules in ``alerts/`` can rely on them) as a pure function of the sessions'
reports; :mod:`tui.export.exporter` keeps the probe-only sessions and serves the
series over HTTP (``/metrics``) and/or as a file for node_exporter's textfile
collector. Nothing is ever pushed: a Pushgateway keeps the last value forever.
"""
