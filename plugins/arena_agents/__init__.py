"""Coding agents as a workload family (issue 57): sessions that share a prefix, call tools, wait
for them and grow their context. So far it holds the session planner (:mod:`arena_agents.sessions`);
it registers no hook yet."""
