"""Memory upkeep: the jobs that keep a memory's scores honest and its size in
check, and the schedule that runs them.

    decay        importance from base importance, age and references (nightly)
    reviews      FSRS state from how the agent's output used what it recalled
    relations    `similar` edges on index, `supports` edges from rules to evidence
    consolidate  rules and facts from clusters of related memories
    compact      archive aged journal rows, merge near-duplicates, stage retirement
    health       a daily five-metric score per workspace and crew
    nudge        the in-session reminder to write memory down
    lease        one runner per job and workspace at a time
    scheduler    a thread that runs each job when it is due

Pure math lives in ``episodic.scoring`` (decay, review, health, similarity); SQL lives in
the store. ``episodic.service.Episodic`` exposes each job as a method and the CLI as
``episodic upkeep ...``, ``episodic consolidate run`` and ``episodic memory health``.
"""
