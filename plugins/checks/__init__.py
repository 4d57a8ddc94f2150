"""Built-in checks registered with the plugin manager."""
