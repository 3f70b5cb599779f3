// The signed-in dashboard: header, the view the hash names, and the action dialog shared by every view.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ActionDialog, ActionStatusLine } from './action-dialog.js';
import { ActionContext, useActionRunner } from './action-runner.js';
import { messageOf } from './api-client.js';
import { isGroup, type ListItem } from './api-types.js';
import { ComponentPage } from './component-page.js';
import { useDashboardData } from './dashboard-data.js';
import { HistoryPage } from './history-page.js';
import { Overview } from './overview.js';
import { SiteHeader } from './site-header.js';
import { useRoute } from './route.js';
import { signOut } from './session.js';

export interface AppProps {
  onSignedOut(): void;
}

const unitsOf = (items: ListItem[] | undefined): string[] =>
  (items ?? []).flatMap((c) => (isGroup(c) ? c.members.map((m) => m.name) : [c.name]));

export function App({ onSignedOut }: AppProps) {
  const route = useRoute();
  const data = useDashboardData();
  const units = useMemo(() => unitsOf(data.components.value), [data.components.value]);
  const actions = useActionRunner(units, () => data.refresh('components'));
  const [signOutError, setSignOutError] = useState<string>();

  // A new view takes the focus to its heading, so that keyboard and screen-reader users start reading there.
  const routeKey = route.view === 'component' ? `c:${route.name}` : route.view;
  const firstRoute = useRef(true);
  useEffect(() => {
    if (firstRoute.current) {
      firstRoute.current = false;
      return;
    }
    window.scrollTo(0, 0);
    document.querySelector<HTMLElement>('main h1')?.focus();
  }, [routeKey]);

  async function doSignOut() {
    try {
      await signOut();
      onSignedOut();
    } catch (e) {
      setSignOutError(`Sign out failed: ${messageOf(e)}`);
    }
  }

  let view;
  if (route.view === 'overview') view = <Overview data={data} />;
  else if (route.view === 'history') view = <HistoryPage first={data.history} />;
  else if (route.view === 'component')
    view = <ComponentPage key={route.name} name={route.name} items={data.components.value} pulls={data.pulls} />;
  else
    view = (
      <section>
        <h1 tabIndex={-1}>Not found</h1>
        <p>
          Nothing lives at <code>{route.hash}</code>. <a href="#/">Back to the overview</a>
        </p>
      </section>
    );

  return (
    <ActionContext.Provider value={actions.runner}>
      <SiteHeader data={data} route={route} onSignOut={() => void doSignOut()} />
      {signOutError && <p class="banner error">{signOutError}</p>}
      <ActionStatusLine status={actions.status} onDismiss={actions.dismiss} />
      <main id="main">{view}</main>
      <ActionDialog pending={actions.pending} onConfirm={actions.confirm} onCancel={actions.cancel} />
    </ActionContext.Provider>
  );
}
