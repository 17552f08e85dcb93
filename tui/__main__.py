"""`python -m tui` runs the babysit command line."""

from tui.cli import main

raise SystemExit(main())
