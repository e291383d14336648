from tlmsearch.cli import main

raise SystemExit(main())
