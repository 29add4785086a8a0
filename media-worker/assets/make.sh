#!/usr/bin/env bash
# Regenerates the ambient loops of background_sound (see README.md).
set -euo pipefail
cd "$(dirname "$0")"
sox -n -r 16000 -c 1 -b 16 office.wav synth 6 brownnoise vol 0.5 lowpass 1200 fade h 0.05 6 0.05
sox -n -r 16000 -c 1 -b 16 cafe.wav synth 6 pinknoise vol 0.35 bandpass 900 700 tremolo 0.3 30 fade h 0.05 6 0.05
sox -n -r 16000 -c 1 -b 16 static.wav synth 6 whitenoise vol 0.12 fade h 0.05 6 0.05
