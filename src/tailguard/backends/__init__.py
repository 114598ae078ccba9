"""Derivation backends: everything generated from the one parsed spec."""
