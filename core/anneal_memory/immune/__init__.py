"""The immune system: rules that decide what level a pattern line may hold."""
