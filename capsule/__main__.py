from capsule.cli.main import main

raise SystemExit(main())
