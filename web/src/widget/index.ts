// The drop-in: `<script src=".../vap-widget.js" data-publishable-key="vap_pk_..." data-agent-id="...">`
// renders the widget where the script tag is (or in `data-target`), with no other code on the host page.
// Attributes: data-publishable-key, data-agent-id (required); data-api-base (default: the script's origin);
// data-title; data-variables (JSON object of strings); data-target (CSS selector of a container: the widget
// then sits in the page's flow instead of floating in the corner).
import { Widget } from './widget.ts';

export { Widget };

function mount(script: HTMLScriptElement): void {
  const d = script.dataset;
  const apiBase = d.apiBase ?? new URL(script.src, location.href).origin;
  const host = document.createElement('vap-widget');
  const target = d.target ? document.querySelector(d.target) : null;
  if (target) {
    host.setAttribute('data-inline', '');
    target.append(host);
  } else {
    document.body.append(host);
  }
  let variables: Record<string, string> | undefined;
  try {
    variables = d.variables ? (JSON.parse(d.variables) as Record<string, string>) : undefined;
  } catch {
    console.error('vap: data-variables is not valid JSON; ignored');
  }
  const widget = new Widget(host, {
    apiBase,
    publishableKey: d.publishableKey ?? '',
    agentId: d.agentId ?? '',
    ...(variables ? { variables } : {}),
    ...(d.title ? { title: d.title } : {}),
  });
  (window as { vapWidget?: Widget }).vapWidget = widget;
}

const script = document.currentScript;
if (script instanceof HTMLScriptElement) {
  // Mounted once the body exists (a tag in <head> runs before it).
  if (document.body) mount(script);
  else document.addEventListener('DOMContentLoaded', () => mount(script), { once: true });
}
