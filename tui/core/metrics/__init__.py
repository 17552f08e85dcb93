"""Metric lines of the engines' logs (and ``/metrics`` text) as typed samples, and their series.

Each module holds one piece, each pure (no I/O, no clock unless one is injected):

* :mod:`~tui.core.metrics.model` — units, canonical metrics and the
  :class:`~tui.core.metrics.model.MetricSample` a line or scrape becomes;
* :mod:`~tui.core.metrics.fields` — the ``key: value`` part of a metric line, typed;
* :mod:`~tui.core.metrics.stamps` — the times printed on lines, as datetimes and epochs;
* :mod:`~tui.core.metrics.parse` — :class:`~tui.core.metrics.parse.MetricsParser`, one
  log line into samples, by the readers of the engines in :mod:`tui.engines`;
* :mod:`~tui.core.metrics.prometheus` — the same for ``/metrics`` scrapes, counters
  made into rates;
* :mod:`~tui.core.metrics.boundaries` — where a run starts and when it is ready, and
  :class:`~tui.core.metrics.boundaries.LogScanner` running both over one file's lines;
* :mod:`~tui.core.metrics.series` — bounded series per service, a new one for each run.
"""
