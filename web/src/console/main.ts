// The console: sign in with a secret API key or a dashboard token (held in memory only, in playground/api.ts),
// then the pages. A 401 at any point (an expired token, a revoked key) returns to sign-in with the page kept in
// the address, so signing in again carries on where the user was.
import { api, ApiError, setCredential, setUnauthorizedHandler } from '../playground/api.ts';
import { describe, mount, render, route } from './app.ts';
import { agentPage, agentsPage } from './pages/agents.ts';
import { callPage, callsPage } from './pages/calls.ts';
import { knowledgeBasePage, knowledgeBasesPage } from './pages/knowledge.ts';
import { numberPage, numbersPage } from './pages/numbers.ts';
import { overviewPage } from './pages/overview.ts';
import { settingsPage } from './pages/settings.ts';
import { stopTalk, talkPage } from './pages/talk.ts';
import { webhookPage, webhooksPage } from './pages/webhooks.ts';

const $ = <T extends HTMLElement = HTMLElement>(id: string): T => {
  const e = document.getElementById(id);
  if (!e) throw new Error(`#${id} missing from the page`);
  return e as T;
};

const ui = {
  loading: $('loading'),
  signin: $('signin'),
  form: $<HTMLFormElement>('signin-form'),
  credential: $<HTMLInputElement>('credential'),
  button: $<HTMLButtonElement>('signin-button'),
  message: $('signin-message'),
  app: $('app'),
  nav: $('nav'),
  view: $('view'),
  who: $('who'),
  signout: $<HTMLButtonElement>('signout'),
};

const ID = '([0-9A-Za-z-]{1,100})';
route(/^\/overview$/, 'overview', overviewPage);
route(/^\/calls$/, 'calls', callsPage);
route(new RegExp(`^/calls/${ID}$`), 'calls', callPage);
route(/^\/agents$/, 'agents', agentsPage);
route(new RegExp(`^/agents/${ID}/talk$`), 'agents', talkPage);
route(new RegExp(`^/agents/${ID}$`), 'agents', agentPage);
route(/^\/numbers$/, 'numbers', numbersPage);
route(new RegExp(`^/numbers/${ID}$`), 'numbers', numberPage);
route(/^\/knowledge-bases$/, 'knowledge', knowledgeBasesPage);
route(new RegExp(`^/knowledge-bases/${ID}$`), 'knowledge', knowledgeBasePage);
route(/^\/webhooks$/, 'webhooks', webhooksPage);
route(new RegExp(`^/webhooks/${ID}$`), 'webhooks', webhookPage);
route(/^\/settings$/, 'settings', settingsPage);
mount(ui.view, ui.nav);
window.addEventListener('hashchange', stopTalk);

function showSignIn(message: string): void {
  stopTalk();
  setCredential(null);
  ui.app.hidden = true;
  ui.who.hidden = true;
  ui.signout.hidden = true;
  ui.view.replaceChildren();
  ui.signin.hidden = false;
  ui.message.textContent = message;
  ui.credential.focus();
}

async function signIn(value: string): Promise<void> {
  setCredential(value);
  ui.button.disabled = true;
  ui.message.textContent = '';
  try {
    const ws = await api<{ name: string }>('/v1/workspace');
    // The field is emptied so the credential is kept in one place only: the variable in playground/api.ts.
    ui.credential.value = '';
    ui.signin.hidden = true;
    ui.app.hidden = false;
    ui.who.textContent = `${ws.name} (credential held in memory only)`;
    ui.who.hidden = false;
    ui.signout.hidden = false;
    await render();
  } catch (err) {
    setCredential(null);
    ui.message.textContent =
      err instanceof ApiError && err.status === 401 ? `The key or token was rejected: ${err.message}. Check it and sign in again.` : describe(err);
    ui.credential.focus();
  } finally {
    ui.button.disabled = false;
  }
}

setUnauthorizedHandler((err) => {
  if (ui.app.hidden) return;
  showSignIn(`Your session ended: ${err.message}. The token may have expired or the key been revoked. Sign in again to carry on where you were.`);
});

ui.form.addEventListener('submit', (ev) => {
  ev.preventDefault();
  const value = ui.credential.value.trim();
  if (!value) {
    ui.message.textContent = 'Enter a secret API key or a dashboard token.';
    ui.credential.focus();
    return;
  }
  void signIn(value);
});
ui.signout.addEventListener('click', () => showSignIn('Signed out. The credential is forgotten.'));

ui.loading.hidden = true;
ui.signin.hidden = false;
