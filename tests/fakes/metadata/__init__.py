"""Fake instance metadata services, DMI trees and config drive for tests."""
