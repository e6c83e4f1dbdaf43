"""The run path: from a plan to a sealed run folder. The engine starts (or attaches to) a server,
drives each workload with its runner, watches the machine (probes, telemetry), checks what it
measured (sanity, the roofline's ceiling) and stores it (manifest, store, integrity); capacity
searches repeat a workload at growing load."""
