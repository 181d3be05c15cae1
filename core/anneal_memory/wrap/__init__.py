"""The wrap: prepare the package, validate and save the continuity, the baton gate."""
