"""What one call carries, whatever the transport: who calls, what cancels it, its progress."""
