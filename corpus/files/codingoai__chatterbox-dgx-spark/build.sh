#!/bin/bash
docker build -t chatterbox:latest .
