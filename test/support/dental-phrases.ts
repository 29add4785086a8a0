// What the web-call tests' agent says and what their caller may hear (test/e2e/web-call, images, agent-version-call).
// With a grammar pocketsphinx picks the closest sentence, so hearing the right one (not a distractor) shows the
// audio carried it.
export const FIRST_MESSAGE = 'Hello, thank you for calling Acme Dental.';
export const ANSWER = 'We open at nine in the morning.';
/** What the stand-in says to anything else: one of the grammar's distractors. */
export const OTHER_ANSWER = 'Please hold while I transfer your call.';
/** The expected sentences and the distractors. */
export const GRAMMAR = `#JSGF V1.0;
grammar heard;
public <s> = hello thank you for calling acme dental
  | we open at nine in the morning
  | please hold while i transfer your call
  | sorry we are closed on sundays
  | goodbye and have a nice day;`;
