from ascend_tune.cli import main

main()
