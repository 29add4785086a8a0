// LiveKit's development credentials (`livekit-server --dev`: key "devkey", secret "secret") are public: anyone
// who reaches the LiveKit server could mint room tokens and join or control every call. Both the control
// plane and the media workers refuse to start with them in production.

export const DEV_LIVEKIT_API_KEY = 'devkey';
export const DEV_LIVEKIT_API_SECRET = 'secret';

/** The start-up error for production with LiveKit's development credentials, or null when they are not. */
export function devLivekitCredentialsError(nodeEnv: string | undefined, apiKey: string, apiSecret: string): string | null {
  if (nodeEnv !== 'production') return null;
  if (apiKey !== DEV_LIVEKIT_API_KEY && apiSecret !== DEV_LIVEKIT_API_SECRET) return null;
  return (
    "LIVEKIT_API_KEY/LIVEKIT_API_SECRET are LiveKit's development credentials (devkey/secret), which anyone can use " +
    'to join or control every room: set your LiveKit server\'s own key and secret (NODE_ENV=production)'
  );
}
