package e2e

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/simulators/datasim"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testenv"
	"github.com/ltiop/ltiop/webserver/clients/platformdata"
	"github.com/ltiop/ltiop/webserver/clients/webhook"
)

// ltijs (github.com/Cvmcosta/ltijs, from npm, pinned by hack/realtools/package-lock.json)
// is a real third-party LTI 1.3 tool. hack/realtools/ltijs-tool.js runs it unchanged on
// PostgreSQL (ltijs-sequelize); here it registers itself with ltiop by dynamic
// registration, validates ltiop's launch with its own checks and uses its own NRPS and AGS
// clients against the services ltiop serves, fed by the integrator's data API (datasim).
//
// It needs node, npm and PostgreSQL's initdb and postgres; without them it skips, unless
// LTIOP_REQUIRE_LTIJS is set (.ci/run sets it and installs them). hack/realtools/ltijs.sh
// runs this spec alone and prints ltijs's report.
var _ = Describe("ltijs, a real LTI tool, against platform mode", func() {
	It("registers by dynamic registration, accepts ltiop's launches, reads the roster and writes grades through ltiop, returns deep links", func(ctx SpecContext) {
		pg := realToolPrerequisites()
		dir := filepath.Join(testenv.Root(), "hack", "realtools")
		npmInstall(ctx, dir)
		db := startPostgres(ctx, pg)

		const ns = "ltiop-ltijs"
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ltiop-api-key"},
			StringData: map[string]string{"apiKey": apiKey, "webhookSecret": webhookSecret}})).To(Succeed())
		key, err := webhook.ParseSecret(webhookSecret)
		Expect(err).NotTo(HaveOccurred())
		data := datasim.New(key)
		dataSrv := httptest.NewServer(data.Handler())
		DeferCleanup(dataSrv.Close)
		data.AddMembers("course-1", "Biology", datasim.Member{UserID: "student-5", Roles: []string{"Learner"}, Name: "Sam Student"},
			datasim.Member{UserID: "student-6", Roles: []string{"Learner"}, Name: "Alex Learner"},
			datasim.Member{UserID: "teacher-1", Roles: []string{"Instructor"}, Name: "Terry Teacher"})
		launchItem := data.AddLineItem("course-1", "ltijs", datasim.LineItem{Label: "Quiz 1", ScoreMaximum: 10, ResourceLinkID: "rl-1"})
		integrator := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		DeferCleanup(integrator.Close)
		d := startReplica(ns, restCfg, func(c *config.Config) {
			c.PlatformLaunchURL = integrator.URL + "/launch"
			c.PlatformDeepLinkingReturnURL = integrator.URL + "/content-items"
			c.PlatformData.URL = dataSrv.URL + "/data"
		})

		By("starting ltijs")
		tool := startLtijs(dir, db)

		By("ltijs registering itself through ltiop's dynamic registration, pre-approved")
		started := callAt(d.Local, "POST", "/api/tools/registrations", map[string]any{"initiationUrl": tool + "/register",
			"preApproved": true, "toolId": "ltijs"}, bearer)
		Expect(started.Status).To(Equal(201), string(started.Raw))
		res, err := http.Get(started.JSON["url"].(string)) // the page the integrator opens
		Expect(err).NotTo(HaveOccurred())
		page := readBody(res)
		Expect(res.StatusCode).To(Equal(200), page)
		Expect(page).To(ContainSubstring("org.imsglobal.lti.close"))
		Eventually(func(g Gomega) {
			got := callAt(d.Local, "GET", "/api/tools/ltijs", nil, bearer)
			g.Expect(got.Status).To(Equal(200), string(got.Raw))
			g.Expect(got.JSON["ready"]).To(BeTrue(), string(got.Raw))
		}).Should(Succeed())

		By("launching ltijs with the services ltiop serves; ltijs validates the launch and calls them")
		created := callAt(d.Local, "POST", "/api/launches", map[string]any{"toolId": "ltijs", "user": "student-5",
			"resourceLink": map[string]string{"id": "rl-1", "title": "Quiz 1"}}, bearer)
		Expect(created.Status).To(Equal(201), string(created.Raw))
		jar, err := cookiejar.New(nil)
		Expect(err).NotTo(HaveOccurred())
		browser := &http.Client{Jar: jar, Timeout: time.Minute, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
			if strings.HasPrefix(r.URL.String(), integrator.URL) {
				return http.ErrUseLastResponse // the integrator's launch page: ltiop's payload is in the URL
			}
			return nil
		}}
		action, form, ok := lmssim.ParseAutoSubmit(created.JSON["form"].(string))
		Expect(ok).To(BeTrue(), created.JSON["form"])
		res, err = browser.PostForm(action, form) // ltijs's login → ltiop's authorize → the integrator
		Expect(err).NotTo(HaveOccurred())
		body := readBody(res)
		Expect(res.StatusCode).To(Equal(http.StatusFound), body)
		toIntegrator, err := url.Parse(res.Header.Get("Location"))
		Expect(err).NotTo(HaveOccurred())
		answer := callAt(d.Local, "POST", "/api/launches/idtoken", map[string]any{
			"payload":      toIntegrator.Query().Get("payload"),
			"user":         map[string]any{"roles": []string{"http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"}, "name": "Sam Student"},
			"context":      map[string]any{"id": "course-1", "title": "Biology"},
			"resourceLink": map[string]any{"id": "rl-1", "title": "Quiz 1"},
			"services":     map[string]any{"namesAndRoles": true, "assignmentAndGrades": map[string]any{"lineItemId": launchItem}},
		}, bearer)
		Expect(answer.Status).To(Equal(200), string(answer.Raw))
		action, form, ok = lmssim.ParseAutoSubmit(answer.JSON["form"].(string))
		Expect(ok).To(BeTrue())
		res, err = browser.PostForm(action, form) // ltijs validates, redirects with its ltik, runs the services
		Expect(err).NotTo(HaveOccurred())
		body = readBody(res)
		Expect(res.StatusCode).To(Equal(200), body)
		var report ltijsReport
		Expect(json.Unmarshal([]byte(body), &report)).To(Succeed(), body)
		AddReportEntry("ltijs report", body)
		GinkgoWriter.Printf("ltijs report: %s\n", body)

		By("ltijs saw the launch as ltiop sent it")
		Expect(report.Iss).To(Equal(d.URL))
		Expect(report.User).To(Equal("student-5"))
		Expect(report.Context).To(Equal("course-1"))
		Expect(report.ResourceLink).To(Equal("rl-1"))
		for _, s := range report.Steps {
			Expect(s.OK).To(BeTrue(), "ltijs step %s failed: %s (HTTP %d) %s", s.Step, s.Error, s.Status, s.Body)
		}
		steps := report.byName()
		Expect(steps).To(HaveKey("ags.scoreLaunchItem"), body)

		By("the roster, every page, as ltijs read it from ltiop's NRPS")
		var roster struct {
			Context map[string]any `json:"context"`
			Members []struct {
				UserID string   `json:"user_id"`
				Roles  []string `json:"roles"`
				Status string   `json:"status"`
			} `json:"members"`
		}
		Expect(json.Unmarshal(steps["nrps.members"], &roster)).To(Succeed())
		Expect(roster.Context).To(HaveKeyWithValue("id", "course-1"))
		Expect(roster.Members).To(HaveLen(3)) // two pages of two, through Link: rel="next"
		Expect(roster.Members[2].UserID).To(Equal("teacher-1"))
		Expect(roster.Members[2].Roles).To(ConsistOf("http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"))
		Expect(roster.Members[0].Status).To(Equal("Active"))
		Expect(string(steps["nrps.learners"])).To(MatchJSON(`["student-5","student-6"]`))

		By("the grades, which reached the integrator's data API")
		var item struct {
			ID    string `json:"id"`
			Label string `json:"label"`
		}
		Expect(json.Unmarshal(steps["ags.updateLineItem"], &item)).To(Succeed())
		Expect(item.Label).To(Equal("ltijs essay (revised)"))
		Expect(item.ID).To(HavePrefix(d.URL + "/lti/platform/services/"))
		createdID := item.ID[strings.LastIndex(item.ID, "/")+1:]
		essay := data.Scores("course-1", createdID)
		Expect(essay).To(HaveLen(1))
		Expect(*essay[0].ScoreGiven).To(Equal(42.0))
		Expect(*essay[0].ScoreMaximum).To(Equal(50.0))
		Expect(essay[0].UserID).To(Equal("student-5"))
		Expect(essay[0].Comment).To(Equal("Scored by ltijs"))
		quiz := data.Scores("course-1", launchItem)
		Expect(quiz).To(HaveLen(1))
		Expect(*quiz[0].ScoreGiven).To(Equal(7.0))
		Expect(*quiz[0].ScoreMaximum).To(Equal(10.0)) // ltijs read it from the line item
		Expect(string(steps["ags.results"])).To(ContainSubstring(`"userId":"student-5"`))
		Expect(string(steps["ags.lineitemsByTag"])).To(ContainSubstring(`"tag":"essay"`))
		Expect(string(steps["ags.lineitemsByTag"])).NotTo(ContainSubstring(`"Quiz 1"`))

		By("a deep-linking launch: ltijs answers its own signed LtiDeepLinkingResponse, which ltiop verifies")
		created = callAt(d.Local, "POST", "/api/launches", map[string]any{"toolId": "ltijs", "user": "teacher-1",
			"messageType": "LtiDeepLinkingRequest"}, bearer)
		Expect(created.Status).To(Equal(201), string(created.Raw))
		action, form, ok = lmssim.ParseAutoSubmit(created.JSON["form"].(string))
		Expect(ok).To(BeTrue())
		res, err = browser.PostForm(action, form)
		Expect(err).NotTo(HaveOccurred())
		body = readBody(res)
		Expect(res.StatusCode).To(Equal(http.StatusFound), body)
		toIntegrator, err = url.Parse(res.Header.Get("Location"))
		Expect(err).NotTo(HaveOccurred())
		multiple := true
		answer = callAt(d.Local, "POST", "/api/launches/idtoken", map[string]any{
			"payload": toIntegrator.Query().Get("payload"),
			"user":    map[string]any{"roles": []string{"http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"}},
			"context": map[string]any{"id": "course-1"},
			"deepLinking": map[string]any{"acceptTypes": []string{"ltiResourceLink", "link"}, "acceptMultiple": &multiple,
				"acceptPresentationDocumentTargets": []string{"iframe", "window"}, "data": "week-2"},
		}, bearer)
		Expect(answer.Status).To(Equal(200), string(answer.Raw))
		action, form, ok = lmssim.ParseAutoSubmit(answer.JSON["form"].(string))
		Expect(ok).To(BeTrue())
		res, err = browser.PostForm(action, form) // ltijs validates and answers its form to ltiop
		Expect(err).NotTo(HaveOccurred())
		body = readBody(res)
		Expect(res.StatusCode).To(Equal(200), body)
		action, form, ok = lmssim.ParseAutoSubmit(body)
		Expect(ok).To(BeTrue(), body)
		Expect(action).To(HavePrefix(d.URL + "/lti/platform/"))
		res, err = browser.PostForm(action, form) // ltiop verifies it and sends the browser to the integrator
		Expect(err).NotTo(HaveOccurred())
		body = readBody(res)
		Expect(res.StatusCode).To(Equal(http.StatusSeeOther), body)
		toIntegrator, err = url.Parse(res.Header.Get("Location"))
		Expect(err).NotTo(HaveOccurred())
		Expect(toIntegrator.Path).To(Equal("/content-items"))
		items := callAt(d.Local, "POST", "/api/launches/content-items", map[string]string{"payload": toIntegrator.Query().Get("payload")}, bearer)
		Expect(items.Status).To(Equal(200), string(items.Raw))
		Expect(items.JSON["toolId"]).To(Equal("ltijs"))
		Expect(items.JSON["msg"]).To(Equal("Added by ltijs"))
		Expect(items.JSON["contentItems"]).To(HaveLen(2))
		first := items.JSON["contentItems"].([]any)[0].(map[string]any)
		Expect(first).To(HaveKeyWithValue("type", "ltiResourceLink"))
		Expect(first).To(HaveKeyWithValue("title", "ltijs quiz 2"))

		By("every operation of the data API was called, each for the launch's context")
		ops := map[string]int{}
		for _, c := range data.Calls() {
			Expect(c.ContextID).To(Equal("course-1"))
			ops[c.Operation]++
		}
		Expect(ops).To(Equal(map[string]int{platformdata.OpMemberships: 3, platformdata.OpLineItems: 2,
			platformdata.OpCreateLineItem: 2, platformdata.OpGetLineItem: 2, platformdata.OpUpdateLineItem: 1,
			platformdata.OpDeleteLineItem: 1, platformdata.OpScore: 2, platformdata.OpResults: 1}))
	})
})

// ltijsReport is what hack/realtools/ltijs-tool.js answers a launch.
type ltijsReport struct {
	User         string `json:"user"`
	Iss          string `json:"iss"`
	Context      string `json:"context"`
	ResourceLink string `json:"resourceLink"`
	Steps        []struct {
		Step   string          `json:"step"`
		OK     bool            `json:"ok"`
		Value  json.RawMessage `json:"value"`
		Error  string          `json:"error"`
		Status int             `json:"status"`
		Body   string          `json:"body"`
	} `json:"steps"`
}

func (r ltijsReport) byName() map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, s := range r.Steps {
		out[s.Step] = s.Value
	}
	return out
}

// postgresBin is where PostgreSQL's initdb and postgres are.
type postgresBin struct{ initdb, postgres string }

// realToolPrerequisites finds node, npm and PostgreSQL, or skips (fails, when
// LTIOP_REQUIRE_LTIJS is set) saying what is missing.
func realToolPrerequisites() postgresBin {
	var missing []string
	for _, name := range []string{"node", "npm"} {
		if _, err := exec.LookPath(name); err != nil {
			missing = append(missing, name)
		}
	}
	var pg postgresBin
	dirs := []string{""}
	more, _ := filepath.Glob("/usr/lib/postgresql/*/bin") // Debian keeps them off the PATH
	dirs = append(dirs, more...)
	for _, dir := range dirs {
		initdb, postgres := filepath.Join(dir, "initdb"), filepath.Join(dir, "postgres")
		if dir == "" {
			initdb, _ = exec.LookPath("initdb")
			postgres, _ = exec.LookPath("postgres")
		}
		if isExecutable(initdb) && isExecutable(postgres) {
			pg = postgresBin{initdb: initdb, postgres: postgres}
			break
		}
	}
	if pg.initdb == "" {
		missing = append(missing, "PostgreSQL (initdb, postgres)")
	}
	if len(missing) > 0 {
		msg := "ltijs needs " + strings.Join(missing, ", ") + " (Debian: apt-get install nodejs npm postgresql; .ci/run does)"
		if os.Getenv("LTIOP_REQUIRE_LTIJS") != "" {
			Fail("LTIOP_REQUIRE_LTIJS is set but " + msg)
		}
		Skip(msg)
	}
	return pg
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// npmInstall installs hack/realtools's pinned packages (npm ci) unless they are there.
func npmInstall(ctx context.Context, dir string) {
	lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	Expect(err).NotTo(HaveOccurred())
	if st, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil && !st.ModTime().Before(lock.ModTime()) {
		return
	}
	By("npm ci in hack/realtools (ltijs and ltijs-sequelize, pinned)")
	ictx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ictx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "npm ci: %s", out)
}

// database is a running PostgreSQL.
type database struct {
	host string
	port int
}

// startPostgres runs a throwaway PostgreSQL on loopback (trust authentication, a temporary
// data directory) until the end of the spec. PostgreSQL refuses to run as root: as root,
// it runs as the postgres user Debian's package creates.
func startPostgres(ctx context.Context, pg postgresBin) database {
	dir, err := os.MkdirTemp("", "ltiop-ltijs-pg-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = os.RemoveAll(dir) })
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		Expect(err).NotTo(HaveOccurred(), "running as root, PostgreSQL needs a postgres user")
		uid, err := strconv.ParseUint(u.Uid, 10, 32)
		Expect(err).NotTo(HaveOccurred())
		gid, err := strconv.ParseUint(u.Gid, 10, 32)
		Expect(err).NotTo(HaveOccurred())
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		Expect(os.Chown(dir, int(uid), int(gid))).To(Succeed())
	}
	asOwner := func(cmd *exec.Cmd) *exec.Cmd {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
		cmd.Dir = dir
		return cmd
	}
	data := filepath.Join(dir, "data")
	out, err := asOwner(exec.CommandContext(ctx, pg.initdb, "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "initdb: %s", out)
	port := freePort()
	var log lockedBuffer
	cmd := asOwner(exec.Command(pg.postgres, "-D", data, "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-k", dir, "-F"))
	cmd.Stdout, cmd.Stderr = &log, &log
	Expect(cmd.Start()).To(Succeed())
	DeferCleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT) // fast shutdown
		_ = cmd.Wait()
	})
	Eventually(func() error {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
		}
		return err
	}).Should(Succeed(), func() string { return "postgres did not start: " + log.String() })
	return database{host: "127.0.0.1", port: port}
}

// startLtijs runs hack/realtools/ltijs-tool.js until the end of the spec and returns its URL.
func startLtijs(dir string, db database) string {
	port := freePort()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	var log lockedBuffer
	// ltiop's dev instance is http://localhost:<port> on 127.0.0.1: IPv4 first.
	cmd := exec.Command("node", "--dns-result-order=ipv4first", "ltijs-tool.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LTIJS_PORT="+strconv.Itoa(port), "LTIJS_URL="+base, "PGHOST="+db.host,
		"PGPORT="+strconv.Itoa(db.port), "PGDATABASE=postgres", "PGUSER=postgres", "LTIJS_KEY="+rand.Text())
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	Expect(cmd.Start()).To(Succeed())
	DeferCleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		GinkgoWriter.Printf("ltijs output:\n%s\n", log.String())
	})
	Eventually(func() int {
		res, err := http.Get(base + "/keys")
		if err != nil {
			return 0
		}
		res.Body.Close()
		return res.StatusCode
	}, time.Minute).Should(Equal(200), func() string { return "ltijs did not start: " + log.String() })
	return base
}
