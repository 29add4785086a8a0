// rtc-node logs at debug level unless NODE_ENV is production when its logger module loads, and does not
// export the logger; imported first by rtc-client.ts, this makes it load quiet (rtc-client then restores
// NODE_ENV).
export const previousNodeEnv = process.env.NODE_ENV;
process.env.NODE_ENV = 'production';
