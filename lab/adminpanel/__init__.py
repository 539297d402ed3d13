"""The topic admin panel of a lab: topics, configs, reassignment, messages, consumer groups.

Pages are server-rendered with htmx partials; every change goes to the lab's driver thread
(``LiveLab.submit``) and answers with what happened, or Kafka's error beside the field it is about.
"""
