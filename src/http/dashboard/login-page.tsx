import type { FC } from 'hono/jsx';
import { Layout, LOGIN_PATH } from './layout.js';

export const LoginPage: FC<{ next: string; failed: boolean }> = ({ next, failed }) => (
  <Layout title="Log in" page="login" auth={false}>
    <div class="card login">
      <h1>Log in</h1>
      <p class="muted">This server was started with a token (--token). Enter it to use the dashboard.</p>
      <form method="post" action={LOGIN_PATH}>
        <input type="hidden" name="next" value={next} />
        <label>
          Token
          <input type="password" name="token" autocomplete="current-password" required autofocus />
        </label>
        {failed ? (
          <p class="alert" id="login-error">
            That token is not valid.
          </p>
        ) : null}
        <button type="submit">Log in</button>
      </form>
    </div>
  </Layout>
);
