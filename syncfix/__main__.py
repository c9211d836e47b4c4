from syncfix.cli import main

main()
