"""The compiled parts: Mersenne Twister draws as random.Random makes them, sharing its seeding
(pairing/_mersenne.h): a fate's without seeding a whole generator (pairing/_fate_draws.c) and a world's
(backoffice/_world_draws.c); and the surrogate's lean episode (surrogate/_lean_episode.c).

Optional on purpose: where no C compiler or Python headers are present the build is skipped with a
warning, pairing/dice.py draws with random.Random and backoffice/world.py through its pure-Python
WorldDraws: the same numbers, slower.
"""

from setuptools import Extension, setup

PACKAGE = "workflow_src/paired_rollouts"
MERSENNE = [f"{PACKAGE}/pairing/_mersenne.h"]
FATES = [*MERSENNE, f"{PACKAGE}/pairing/_fate_core.h"]

setup(
    ext_modules=[
        Extension(
            "paired_rollouts.pairing._fate_draws",
            [f"{PACKAGE}/pairing/_fate_draws.c"],
            depends=FATES,
            optional=True,
        ),
        Extension(
            "paired_rollouts.backoffice._world_draws",
            [f"{PACKAGE}/backoffice/_world_draws.c"],
            include_dirs=[f"{PACKAGE}/pairing"],
            depends=MERSENNE,
            optional=True,
        ),
        Extension(
            "paired_rollouts.surrogate._lean_episode",
            [f"{PACKAGE}/surrogate/_lean_episode.c"],
            include_dirs=[f"{PACKAGE}/pairing"],
            depends=[*FATES, f"{PACKAGE}/surrogate/_sha256.h"],
            optional=True,
        ),
    ]
)
