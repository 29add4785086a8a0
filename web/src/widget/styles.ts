// The widget's CSS, scoped by its shadow root: host pages' styles do not reach in, and these do not leak out.
export const WIDGET_CSS = `
:host { all: initial; position: fixed; right: 16px; bottom: 16px; z-index: 2147483000; font: 15px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #111827; }
:host([data-inline]) { position: static; }
.panel { box-sizing: border-box; width: min(360px, calc(100vw - 32px)); background: #ffffff; border: 1px solid #9ca3af; border-radius: 12px; box-shadow: 0 4px 16px rgb(0 0 0 / 0.15); padding: 12px; display: flex; flex-direction: column; gap: 8px; }
.controls { display: flex; gap: 8px; flex-wrap: wrap; }
button { font: inherit; min-height: 44px; padding: 8px 16px; border-radius: 8px; border: 2px solid #1d4ed8; cursor: pointer; }
button.call { background: #1d4ed8; color: #ffffff; flex: 1; }
button.call[data-active] { background: #b91c1c; border-color: #b91c1c; }
button.mute { background: #ffffff; color: #1d4ed8; }
button.mute[aria-pressed="true"] { background: #dbeafe; }
button:disabled { cursor: default; opacity: 0.75; }
button:focus-visible { outline: 3px solid #f59e0b; outline-offset: 2px; }
.status { margin: 0; font-weight: 600; }
.error { margin: 0; color: #991b1b; }
.error:empty, .latency:empty { display: none; }
.log { max-height: 240px; overflow-y: auto; margin: 0; padding: 0; }
.log:empty { display: none; }
.log p { margin: 0 0 6px; }
.log .who { font-weight: 600; }
.log .interim { color: #4b5563; }
.latency { margin: 0; font-size: 13px; color: #374151; }
.log:focus-visible { outline: 3px solid #f59e0b; }
`;
