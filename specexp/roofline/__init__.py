"""The roofline: what one forward pass of a model costs on a device, from first principles.

Pure physics on specs (no engine, no clock): the simulator runs on it, and the checker uses it
for the physical limit of a published figure. Reports and checks may import it; it imports
nothing but specexp.spec.experiment.
"""
