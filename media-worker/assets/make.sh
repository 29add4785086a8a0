#!/usr/bin/env bash
# Regenerates the ambient loops of background_sound (see README.md).
set -euo pipefail
cd "$(dirname "$0")"
sox -n -r 16000 -c 1 -b 16 office.wav synth 6 brownnoise vol 0.5 lowpass 1200 fade h 0.05 6 0.05
sox -n -r 16000 -c 1 -b 16 cafe.wav synth 6 pinknoise vol 0.35 bandpass 900 700 tremolo 0.3 30 fade h 0.05 6 0.05
sox -n -r 16000 -c 1 -b 16 static.wav synth 6 whitenoise vol 0.12 fade h 0.05 6 0.05
sox -n -r 16000 -c 1 -b 16 call_center.wav synth 6 pinknoise vol 0.3 bandpass 1500 1200 tremolo 1.5 40 fade h 0.05 6 0.05
sox -n -r 16000 -c 1 -b 16 restaurant.wav synth 6 brownnoise vol 0.45 bandpass 700 900 tremolo 0.6 25 fade h 0.05 6 0.05
