"""Defaulting and validation of the served types, like the real registry."""

import kerrors


def defaults(res, obj, old, registry):
    pass


def validate(res, obj, old, sub):
    return []
