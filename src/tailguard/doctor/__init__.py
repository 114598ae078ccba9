"""``tailguard doctor``: do the presets and adapters still hold on what is installed?

:mod:`~tailguard.doctor.registry` lists the frameworks; :mod:`~tailguard.doctor.versions`
compares installed versions with validated ones; :mod:`~tailguard.doctor.harness` is the
differential harness the preset tests and ``doctor`` share; :mod:`~tailguard.doctor.drivers`
holds one module per framework, each importing its framework (imported only when a check runs,
so the runtime guard and the CLI never need a framework); :mod:`~tailguard.doctor.run` runs it all.
"""
