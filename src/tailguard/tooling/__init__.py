"""Tool plumbing: where the project's ``spec/`` and ``proofs/`` are, the conformance kit's files,
and the theorem registry ``tailguard prove`` runs.
"""
