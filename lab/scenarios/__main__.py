import sys

from lab.scenarios.cli import main

sys.exit(main())
