"""``statebench regress``: catching the commit that made a backend or a strategy slower or bigger,
on a machine shared with others (pairs of processes, interleaved trials, the pairs as replicates).
"""
