"""``python -m tapegrad ...``: see tapegrad.cli."""

from .cli import main

raise SystemExit(main())
