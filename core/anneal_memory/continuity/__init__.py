"""The continuity file: section schemas, parsing of sections and pattern lines, durable facts."""
