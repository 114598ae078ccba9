from tailguard.cli.main import console_main

console_main()
