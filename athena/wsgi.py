import os

from django.core.wsgi import get_wsgi_application

# Servers started outside the project's launcher (gunicorn, celery in deploy/) get production settings unless
# told otherwise; `stack run` / `make run` pass athena.settings.local, the tests athena.settings.test.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "athena.settings.production")
application = get_wsgi_application()
