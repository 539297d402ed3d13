"""The classroom: exercise progress, and instructors' demos that students follow."""
