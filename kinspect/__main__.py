from kinspect.cli import main

raise SystemExit(main())
