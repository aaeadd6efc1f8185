"""One submission graded, wherever it runs (each module one thing):

- `executors`    where jobs run: `LocalExecutor` (worker processes here) or `DaskExecutor` (a cluster)
- `jobs`         a job and the long-lived worker process that runs jobs one after another
- `worker`       the worker's side: nbgrader's autograde and feedback for one submission
- `protocol`     job.json and result.json, what the driver and a worker exchange
- `bounds`       the watchdog: wall clock, memory and tasks of a process tree
- `sandbox`      the bubblewrap sandbox of one kernel, and whether one can start here (`mode`)
- `provisioner`  the jupyter_client kernel provisioner that starts every grading kernel in one
- `confine`      the first process inside a sandbox: limits set, files copied, then the kernel
"""
