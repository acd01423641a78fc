# The *_script.py files run under mpiexec (test_distributed.py starts them); importing them
# here, as --doctest-modules would, would start training inside the test process.
collect_ignore_glob = ["*_script.py"]
