"""Streaming recogniser over Debian's pocketsphinx (python3-pocketsphinx), driven by local-stt.ts.

stdin carries framed messages: one type byte, a little-endian uint32 length, then the payload.
  b'A' raw audio, 16 kHz mono signed 16-bit little-endian
  b'F' flush: end the current utterance now and report it
stdout carries one JSON object per line:
  {"type": "ready"}
  {"type": "start", "t": <s>}                       speech started (pocketsphinx's own VAD)
  {"type": "partial", "text": ...}                 interim hypothesis
  {"type": "final", "text": ..., "start": <s>, "end": <s>, "words": [[w, start, end, conf], ...]}
  {"type": "end", "t": <s>}                        speech ended
Times are seconds of audio since the stream began. The one argument is a JSON object of options.

Two guards keep the first utterance of a stream as well recognised as the later ones. Live cepstral mean
normalisation updates its mean at each end of utterance, so a stretch that pocketsphinx's VAD takes for
speech and that holds no words (its noise-floor tracking fires on near-silence as a stream starts, or a
noise burst) would normalise the next real utterance against noise: slower search, wrong words. So:
  - audio within +-DIGITAL_SILENCE of zero (a resampler's dither over digital silence, decoded Opus
    silence) is passed as true zeros, which the VAD never takes for speech;
  - a speech segment that ends with no words leaves the pocketsphinx utterance open, so it never updates
    the mean; the next segment with words ends it.
"""
import json
import os
import struct
import sys
import tempfile
from array import array

from pocketsphinx import Decoder

MODEL_DIR = '/usr/share/pocketsphinx/model/en-us'
SAMPLE_RATE = 16000
FRAME_RATE = 100  # pocketsphinx frames per second (-frate)
DIGITAL_SILENCE = 2  # int16 amplitude (-84 dBFS): inaudible, below any microphone's noise


def emit(obj):
    sys.stdout.write(json.dumps(obj) + '\n')
    sys.stdout.flush()


def read_exact(stream, n):
    buf = b''
    while len(buf) < n:
        chunk = stream.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def write_temp(text, suffix):
    fd, path = tempfile.mkstemp(suffix=suffix)
    with os.fdopen(fd, 'w') as f:
        f.write(text)
    return path


def make_decoder(opts):
    config = Decoder.default_config()
    config.set_string('-hmm', opts.get('hmm') or os.path.join(MODEL_DIR, 'en-us'))
    config.set_string('-dict', opts.get('dict') or os.path.join(MODEL_DIR, 'cmudict-en-us.dict'))
    config.set_string('-logfn', '/dev/null')
    # Live cepstral mean normalisation lets the search run as audio arrives (the model's default,
    # batch, holds every frame until the utterance ends), which is what makes partials possible.
    config.set_string('-cmn', 'live')
    config.set_int('-vad_postspeech', int(opts.get('vadPostspeech', 40)))
    config.set_int('-vad_prespeech', int(opts.get('vadPrespeech', 20)))
    if opts.get('vadThreshold') is not None:
        config.set_float('-vad_threshold', float(opts['vadThreshold']))
    temp = None
    if opts.get('grammar'):
        # A JSGF grammar limits recognition to its sentences.
        temp = write_temp(opts['grammar'], '.gram')
        config.set_string('-jsgf', temp)
    elif opts.get('keyphrases'):
        # Keyword spotting: one "phrase /threshold/" per line.
        temp = write_temp(''.join('%s /%s/\n' % (p, t) for p, t in opts['keyphrases']), '.kws')
        config.set_string('-kws', temp)
    else:
        config.set_string('-lm', opts.get('lm') or os.path.join(MODEL_DIR, 'en-us.lm.bin'))
    try:
        return Decoder(config)
    finally:
        if temp:
            os.unlink(temp)


def clean_word(word):
    # Alternative pronunciations come back as "word(2)"; fillers as "<sil>", "[noise]"; a grammar's null
    # transitions as "(NULL)".
    if word.startswith('<') or word.startswith('[') or word.startswith('++') or word.startswith('('):
        return None
    paren = word.find('(')
    return word[:paren] if paren > 0 else word


def is_digital_silence(payload):
    samples = array('h', payload)
    return max(samples) <= DIGITAL_SILENCE and min(samples) >= -DIGITAL_SILENCE


def hyp_text(hyp):
    return ' '.join(w for w in (clean_word(x) for x in hyp.hypstr.split()) if w) if hyp else ''


def has_words(hyp):
    return bool(hyp_text(hyp))


def main():
    opts = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    partial_every = max(1, int(opts.get('partialIntervalMs', 200) * SAMPLE_RATE / 1000))
    decoder = make_decoder(opts)
    decoder.start_utt()
    emit({'type': 'ready'})

    stdin = sys.stdin.buffer
    samples = 0  # audio seen since the stream began
    utt_start_samples = 0  # where the current pocketsphinx utterance began
    in_speech = False
    last_partial = ''
    since_partial = 0

    def finish_utterance():
        nonlocal utt_start_samples, in_speech, last_partial
        decoder.end_utt()
        hyp = decoder.hyp()
        offset = utt_start_samples / SAMPLE_RATE
        words = []
        for seg in decoder.seg():
            word = clean_word(seg.word)
            if word is None:
                continue
            conf = decoder.get_logmath().exp(seg.prob)
            words.append([word, offset + seg.start_frame / FRAME_RATE, offset + (seg.end_frame + 1) / FRAME_RATE, conf])
        text = ' '.join(w[0] for w in words) if words else hyp_text(hyp)
        if in_speech or text:
            start = words[0][1] if words else offset
            end = words[-1][2] if words else samples / SAMPLE_RATE
            conf = sum(w[3] for w in words) / len(words) if words else 0.0
            if text:
                emit({'type': 'final', 'text': text, 'start': start, 'end': end, 'confidence': conf, 'words': words})
            emit({'type': 'end', 't': samples / SAMPLE_RATE})
        decoder.start_utt()
        utt_start_samples = samples
        in_speech = False
        last_partial = ''

    while True:
        header = read_exact(stdin, 5)
        if header is None:
            break
        kind, length = header[:1], struct.unpack('<I', header[1:])[0]
        payload = read_exact(stdin, length) if length else b''
        if payload is None:
            break
        if kind == b'F':
            finish_utterance()
            continue
        if kind != b'A' or not payload:
            continue
        if is_digital_silence(payload):
            payload = bytes(len(payload))
        decoder.process_raw(payload, False, False)
        samples += len(payload) // 2
        since_partial += len(payload) // 2
        speaking = decoder.get_in_speech()
        if speaking and not in_speech:
            in_speech = True
            emit({'type': 'start', 't': samples / SAMPLE_RATE})
        if in_speech and since_partial >= partial_every:
            since_partial = 0
            hyp = decoder.hyp()
            text = hyp_text(hyp)
            if text and text != last_partial:
                last_partial = text
                emit({'type': 'partial', 'text': text})
        if in_speech and not speaking:
            if not has_words(decoder.hyp()):
                # No words: report the end of the segment, keep the utterance (and the mean) as they are.
                emit({'type': 'end', 't': samples / SAMPLE_RATE})
                in_speech = False
                last_partial = ''
                continue
            finish_utterance()

    finish_utterance()


if __name__ == '__main__':
    try:
        main()
    except (BrokenPipeError, KeyboardInterrupt):
        pass
