"""Front ends for people: the CLI's command dispatch (and, later, the interactive shell)."""
