from memvec.cli import main

main()
