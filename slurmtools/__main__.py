from slurmtools.cli import main

main()
