from django.db import models


class Account(models.Model):
    name = models.TextField()
    email = models.TextField(null=True)
