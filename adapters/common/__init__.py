"""What the adapters share: the protocol glue (dmlcts_adapter), what they derive from a
descriptor (dmlcts_shapes), and the Vulkan driver table (vulkan)."""
