"""Who is who: roles (instructor, student) and API tokens."""
